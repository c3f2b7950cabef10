import { readFileSync } from 'node:fs';
import { Agent, fetch } from 'undici';
import { assemblePrompt } from '../activities/prompt';
import type { ResponseFormat } from '../domain/runs';
import { JSON_OBJECT_GRAMMAR, startModelServer } from '../workers/modelServer';
import { JSON_PROMPTS, repeatedSentence } from '../test/support/answers';
import { percentiles, type Percentiles } from './load';

/**
 * `npm run bench -- --answers`: what the embedded model answers to everyday prompts, and to
 * json_object requests, under the settings issue 48 compares, so its defaults are measured and not
 * assumed. Each prompt is asked straight of the model server (SmolLM2-135M, as `npm start` runs it),
 * as the service asks it: with or without the default instructions, with the server's sampling or
 * what a request overrides of it, and for JSON with llama.cpp's json_object or the bounded grammar.
 * Counted: answers that ran to the cap, answers that say one sentence more than twice, and JSON
 * answers that are not one object.
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

const patient = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

/** The slot is the window: the service gives a call what the window leaves after its prompt (activities/contextWindow.ts). */
const SLOT_TOKENS = 2048;
/** llama.cpp's own defaults, which the embedded server replaced (workers/modelServer.py). */
const PLAIN_SAMPLING = { temperature: 0.8, top_p: 0.95, repeat_penalty: 1.0, dry_multiplier: 0 };
/** The server's sampling as it was shipped before DRY was named in tokens: its -1 left DRY off. */
const DRY_OFF = { dry_multiplier: 0 };

interface Setting {
  name: string;
  instructions: boolean;
  /** What the request overrides of the server's sampling, or how it asks for JSON. */
  request: Record<string, unknown>;
  format: ResponseFormat;
}

const json_object = { response_format: { type: 'json_object' } };
const grammar = () => ({ grammar: readFileSync(JSON_OBJECT_GRAMMAR, 'utf8') });

const SETTINGS: Setting[] = [
  { name: 'before: no instructions, llama.cpp sampling', instructions: false, request: PLAIN_SAMPLING, format: { type: 'text' } },
  { name: 'default instructions only', instructions: true, request: PLAIN_SAMPLING, format: { type: 'text' } },
  { name: 'server sampling only', instructions: false, request: {}, format: { type: 'text' } },
  { name: 'default instructions and server sampling, DRY off (as shipped until the fix)', instructions: true, request: DRY_OFF, format: { type: 'text' } },
  { name: 'after: default instructions and server sampling', instructions: true, request: {}, format: { type: 'text' } },
];

const JSON_SETTINGS: Setting[] = [
  { name: "json_object: llama.cpp's grammar, DRY off (before)", instructions: true, request: { ...json_object, ...DRY_OFF }, format: { type: 'json_object' } },
  { name: "json_object: llama.cpp's grammar", instructions: true, request: json_object, format: { type: 'json_object' } },
  { name: 'json_object: the bounded grammar (after)', instructions: true, request: grammar(), format: { type: 'json_object' } },
];

export interface AnswerFigures {
  setting: string;
  answers: number;
  ran_to_cap: number;
  repeated_a_sentence: number;
  /** JSON settings: answers that are not one JSON object. */
  not_an_object?: number;
  output_tokens: Percentiles & { max: number };
}

interface Answer {
  capped: boolean;
  repeated: boolean;
  object: boolean;
  tokens: number;
}

export async function answerFigures(rounds: number, log: (line: string) => void): Promise<AnswerFigures[]> {
  const server = await startModelServer(4);
  try {
    const figures: AnswerFigures[] = [];
    const plan = [...SETTINGS.map((s) => [s, EVERYDAY_PROMPTS] as const), ...JSON_SETTINGS.map((s) => [s, JSON_PROMPTS] as const)];
    for (const [setting, prompts] of plan) {
      // Twice the rounds for JSON: its prompts are half as many, and a loop there is one in tens.
      const times = prompts === JSON_PROMPTS ? 2 * rounds : rounds;
      log(`answers: ${times} × ${prompts.length} prompts, ${setting.name}`);
      const answers: Answer[] = [];
      for (let round = 0; round < times; round++) {
        answers.push(...(await Promise.all(prompts.map((input) => ask(server, setting, input)))));
      }
      const tokens = answers.map((a) => a.tokens);
      figures.push({
        setting: setting.name,
        answers: answers.length,
        ran_to_cap: answers.filter((a) => a.capped).length,
        repeated_a_sentence: answers.filter((a) => a.repeated).length,
        ...(setting.format.type === 'json_object' && { not_an_object: answers.filter((a) => !a.object).length }),
        output_tokens: { ...percentiles(tokens), max: Math.max(...tokens) },
      });
      log(`answers: ${JSON.stringify(figures.at(-1))}`);
    }
    return figures;
  } finally {
    server.process.kill('SIGTERM');
  }
}

async function ask(server: { url: string; apiKey: string }, setting: Setting, input: string): Promise<Answer> {
  const messages = assemblePrompt({ config: {}, input, attachments: [], history: [], format: setting.format });
  // "No instructions" is the service before: a prompt without a system message.
  const sent = setting.instructions ? messages : messages.filter((m) => m.role !== 'system');
  // No headers timeout: a reply that loops to the cap is written whole before its headers, minutes on a busy machine.
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    dispatcher: patient,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.apiKey}` },
    body: JSON.stringify({ messages: sent, max_tokens: SLOT_TOKENS - 64, ...setting.request }),
  });
  if (!res.ok) throw new Error(`the model server answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { choices: { message: { content: string }; finish_reason: string }[]; usage: { completion_tokens: number } };
  const [choice] = body.choices;
  const text = choice.message.content;
  return { capped: choice.finish_reason === 'length', repeated: repeatedSentence(text) !== undefined, object: isObject(text), tokens: body.usage.completion_tokens };
}

function isObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}
