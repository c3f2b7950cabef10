/** A NUL character, or half a surrogate pair: PostgreSQL (UTF-8 text, no NUL) can store neither. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether every string in a request part (keys included) can be stored. JSON escapes and URL
 * decoding can both produce unstorable text, which would otherwise fail deep in a query as a 500.
 * Walked with a stack, not recursion: a body may nest as deep as its size allows.
 */
export function storableText(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (UNSTORABLE.test(item)) return false;
    } else if (Array.isArray(item)) {
      for (const child of item) pending.push(child);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) pending.push(key, child);
    }
  }
  return true;
}
