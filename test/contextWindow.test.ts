import { estimatedPromptTokens, fitToWindow, type PromptWith } from '../activities/contextWindow';
import type { ChatMessage } from '../activities/providers/types';

/** Ten turns of about 100 estimated tokens a message, and a prompt of instructions, history and the new message. */
const history: ChatMessage[] = Array.from({ length: 10 }, (_, i): ChatMessage[] => [
  { role: 'user', content: `question ${i} `.padEnd(400, 'q') },
  { role: 'assistant', content: `answer ${i} `.padEnd(400, 'a') },
]).flat();
const promptWith: PromptWith = (kept) => [{ role: 'system', content: 'Be brief.' }, ...kept, { role: 'user', content: 'and now?' }];
const noCount = async () => undefined;

describe('fitting a prompt into the model window', () => {
  it('sends everything, with the output cap, for a run planned before the window was kept', async () => {
    const fitted = await fitToWindow({ max_output_tokens: 500 }, undefined, history, promptWith, noCount);
    expect(fitted).toEqual({ messages: promptWith(history), omitted: 0, maxTokens: 500 });
  });

  it('keeps a history that fits, and gives the call what the window leaves after the prompt', async () => {
    const fitted = await fitToWindow({ max_output_tokens: 10_000 }, 8_192, history, promptWith, noCount);
    expect(fitted.omitted).toBe(0);
    expect(fitted.messages).toEqual(promptWith(history));
    expect(fitted.maxTokens).toBe(8_192 - estimatedPromptTokens(promptWith(history)));
  });

  it('leaves out the oldest whole turns, keeping the instructions, the new message and a quarter of the window for the answer', async () => {
    const fitted = await fitToWindow({}, 1_024, history, promptWith, noCount);
    expect(fitted.omitted % 2).toBe(0);
    expect(fitted.omitted).toBeGreaterThan(0);
    expect(fitted.messages).toEqual(promptWith(history.slice(fitted.omitted)));
    expect(estimatedPromptTokens(fitted.messages)).toBeLessThanOrEqual(768);
    // One turn more would not have fitted.
    expect(estimatedPromptTokens(promptWith(history.slice(fitted.omitted - 2)))).toBeGreaterThan(768);
    expect(fitted.maxTokens).toBe(1_024 - estimatedPromptTokens(fitted.messages));
  });

  it('leaves nothing out of a conversation with no history yet', async () => {
    expect(await fitToWindow({}, 2_048, [], promptWith, noCount)).toMatchObject({ messages: promptWith([]), omitted: 0 });
  });

  it('keeps a history that begins with an answer while it fits, and leaves that answer out first', async () => {
    expect(await fitToWindow({}, 8_192, history.slice(1), promptWith, noCount)).toMatchObject({ messages: promptWith(history.slice(1)), omitted: 0 });
    const fitted = await fitToWindow({}, 1_024, history.slice(1), promptWith, noCount);
    expect(fitted.omitted % 2).toBe(1);
    expect(fitted.messages[1].role).toBe('user');
  });

  it("trusts the server's count over the estimate: a tokenizer that splits finer leaves more out", async () => {
    const counts: number[] = [];
    const twice = async (messages: ChatMessage[]) => {
      counts.push(2 * estimatedPromptTokens(messages));
      return counts.at(-1);
    };
    const fitted = await fitToWindow({}, 2_048, history, promptWith, twice);
    expect(2 * estimatedPromptTokens(fitted.messages)).toBeLessThanOrEqual(1_536);
    expect(fitted.maxTokens).toBe(2_048 - counts.at(-1)!);
    const estimated = await fitToWindow({}, 2_048, history, promptWith, noCount);
    expect(fitted.omitted).toBeGreaterThan(estimated.omitted);
  });

  it('never gives a call fewer than 16 output tokens, and never more than its cap', async () => {
    const huge: PromptWith = (kept) => [{ role: 'system', content: 'x'.repeat(20_000) }, ...kept];
    expect((await fitToWindow({}, 1_024, history, huge, noCount)).maxTokens).toBe(16);
    expect((await fitToWindow({ max_output_tokens: 50 }, 100_000, [], promptWith, noCount)).maxTokens).toBe(50);
  });
});
