import { assemblePrompt } from '../activities/prompt';
import { startModelServer } from '../workers/modelServer';
import { repeatedSentence } from '../test/support/answers';
import { percentiles, type Percentiles } from './load';

/**
 * `npm run bench -- --answers`: what the embedded model answers to everyday prompts, under four
 * settings, so the defaults of issue 48 are measured and not assumed. Each prompt is asked straight
 * of the model server (SmolLM2-135M, as `npm start` runs it), as the service asks it: with or
 * without the default instructions, and with the server's sampling or llama.cpp's plain defaults
 * (sent in the request, which overrides the server's). Counted: answers that ran to the cap, and
 * answers that say one sentence more than twice.
 */
export const EVERYDAY_PROMPTS = [
  'hello',
  'Hi there!',
  'How are you?',
  'What can you do?',
  'What is the capital of France?',
  'Give me a tip for sleeping better.',
  'Write a haiku about autumn.',
  'What is 12 times 7?',
  'Suggest a name for a cat.',
  'How do I boil an egg?',
  'Translate "good morning" into Spanish.',
  'What is photosynthesis?',
  'Tell me a joke.',
  'Summarize: the meeting moved from Monday to Tuesday at 3 pm.',
  'What should I cook for dinner tonight?',
  'Explain what a password manager is.',
  'Thanks!',
  'Is it going to rain tomorrow?',
  'Recommend a book for a long flight.',
  'What is the difference between weather and climate?',
];

/** The slot is the window: the service gives a call what the window leaves after its prompt (activities/contextWindow.ts). */
const SLOT_TOKENS = 2048;
/** llama.cpp's own defaults, which the embedded server replaced (workers/modelServer.py). */
const PLAIN_SAMPLING = { temperature: 0.8, top_p: 0.95, repeat_penalty: 1.0, dry_multiplier: 0 };

interface Setting {
  name: string;
  instructions: boolean;
  plainSampling: boolean;
}

const SETTINGS: Setting[] = [
  { name: 'before: no instructions, llama.cpp sampling', instructions: false, plainSampling: true },
  { name: 'default instructions only', instructions: true, plainSampling: true },
  { name: 'server sampling only', instructions: false, plainSampling: false },
  { name: 'after: default instructions and server sampling', instructions: true, plainSampling: false },
];

export interface AnswerFigures {
  setting: string;
  answers: number;
  ran_to_cap: number;
  repeated_a_sentence: number;
  output_tokens: Percentiles & { max: number };
}

export async function answerFigures(rounds: number, log: (line: string) => void): Promise<AnswerFigures[]> {
  const server = await startModelServer(4);
  try {
    const figures: AnswerFigures[] = [];
    for (const setting of SETTINGS) {
      log(`answers: ${rounds} × ${EVERYDAY_PROMPTS.length} everyday prompts, ${setting.name}`);
      const answers: { capped: boolean; repeated: boolean; tokens: number }[] = [];
      for (let round = 0; round < rounds; round++) {
        answers.push(...(await Promise.all(EVERYDAY_PROMPTS.map((input) => ask(server, setting, input)))));
      }
      const tokens = answers.map((a) => a.tokens);
      figures.push({
        setting: setting.name,
        answers: answers.length,
        ran_to_cap: answers.filter((a) => a.capped).length,
        repeated_a_sentence: answers.filter((a) => a.repeated).length,
        output_tokens: { ...percentiles(tokens), max: Math.max(...tokens) },
      });
    }
    return figures;
  } finally {
    server.process.kill('SIGTERM');
  }
}

async function ask(server: { url: string; apiKey: string }, setting: Setting, input: string): Promise<{ capped: boolean; repeated: boolean; tokens: number }> {
  const messages = assemblePrompt({ config: {}, input, attachments: [], history: [], format: { type: 'text' } });
  // "No instructions" is the service before: a prompt without a system message.
  const sent = setting.instructions ? messages : messages.filter((m) => m.role !== 'system');
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.apiKey}` },
    body: JSON.stringify({ messages: sent, max_tokens: SLOT_TOKENS - 64, ...(setting.plainSampling && PLAIN_SAMPLING) }),
  });
  if (!res.ok) throw new Error(`the model server answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { completion_tokens: number } };
  const [choice] = body.choices;
  return { capped: choice.finish_reason === 'length', repeated: repeatedSentence(choice.message.content) !== undefined, tokens: body.usage.completion_tokens };
}
