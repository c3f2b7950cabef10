import { isStorableText } from '../domain/storable';

/**
 * The names on JavaScript's Object.prototype (`__proto__`, `constructor`, `toString`, …): a yup
 * object schema's lookup of such a key among its fields finds the prototype's member and throws.
 */
const RESERVED_KEYS: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/** The dotted path of the first key in a request part that is reserved (RESERVED_KEYS), or undefined. */
export function reservedKeyAt(value: unknown): string | undefined {
  const pending: [unknown, string][] = [[value, '']];
  while (pending.length > 0) {
    const [item, path] = pending.pop()!;
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push([item[i], `${path}[${i}]`]);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item).reverse()) {
        const at = path ? `${path}.${key}` : key;
        if (RESERVED_KEYS.has(key)) return at;
        pending.push([child, at]);
      }
    }
  }
  return undefined;
}

/**
 * Where a request part (keys included) holds text that cannot be stored: the dotted path of the first
 * such value or key ('' for the part itself), or undefined when all of it can. JSON escapes and URL
 * decoding can both produce unstorable text, which would otherwise fail deep in a query as a 500.
 * Walked with a stack, not recursion: a body may nest as deep as its size allows.
 */
export function unstorableTextAt(value: unknown): string | undefined {
  const pending: [unknown, string][] = [[value, '']];
  const at = (path: string, key: string | number) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key);
  while (pending.length > 0) {
    const [item, path] = pending.pop()!;
    if (typeof item === 'string') {
      if (!isStorableText(item)) return path;
    } else if (Array.isArray(item)) {
      // Pushed last to first, so the first offender in document order is the one named.
      for (let i = item.length - 1; i >= 0; i--) pending.push([item[i], at(path, i)]);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item).reverse()) {
        if (!isStorableText(key)) return at(path, '(a key)');
        pending.push([child, at(path, key)]);
      }
    }
  }
  return undefined;
}
