/** Inputs sent with `response_format: json_object` to an agent with no instructions: test/firstAnswer.test.ts sends them, bench/answers.ts counts the loops. */
export const JSON_PROMPTS = [
  'Describe a cat.',
  'Give me a name and an age.',
  'List three fruits.',
  'What is the weather like?',
  'Make a todo item.',
  'Rate this movie: great acting.',
  'Tell me about Paris.',
  'Describe a car.',
  'Summarize: the meeting moved to Tuesday.',
  'hello',
];

/**
 * A sentence an answer says more than twice, if any: the mark of a small model caught in a loop
 * ("I's got it. I's got it. …"). Sentences end at . ! ? or a line break, and are compared without
 * case, spacing or their end mark; empty ones and list markers do not count.
 */
export function repeatedSentence(text: string): string | undefined {
  const seen = new Map<string, number>();
  for (const raw of text.split(/(?<=[.!?])\s+|\n+/)) {
    const sentence = raw.toLowerCase().replace(/[.!?]+$/, '').replace(/\s+/g, ' ').trim();
    if (!/[\p{L}\p{N}]/u.test(sentence)) continue;
    const n = (seen.get(sentence) ?? 0) + 1;
    if (n > 2) return sentence;
    seen.set(sentence, n);
  }
  return undefined;
}
