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
