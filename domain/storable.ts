/**
 * What PostgreSQL can store: UTF-8 text without NUL. A NUL character or half a surrogate pair (which
 * models, tools and MCP servers may all send) is refused by a text column, and jsonb refuses their
 * JSON escapes (`\u0000`, a lone `\ud800`) as well. Every value written goes through `storable` on its
 * way to the database (db/sql.ts), whatever its origin, so that no reply can fail the write that
 * settles its run; each such character becomes U+FFFD.
 */

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Whether PostgreSQL can store the text as it is (a request's text is refused otherwise: contract/storableText.ts). */
export function isStorableText(text: string): boolean {
  UNSTORABLE.lastIndex = 0;
  return !UNSTORABLE.test(text);
}

/** Text with every NUL and lone surrogate replaced by U+FFFD. */
export function storableText(text: string): string {
  return isStorableText(text) ? text : text.replace(UNSTORABLE, '\uFFFD');
}

/** A JSON text may escape what jsonb refuses: only then is it read escape by escape. */
const ESCAPED_UNSTORABLE = /\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/;
/** JSON's escapes, left to right: `\\` is consumed whole, so `\\u0000` (a backslash, then text) is no escape. */
const ESCAPE = /\\(?:u([0-9a-fA-F]{4})|[^u])/g;
const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A JSON text (what JSON.stringify gives for a jsonb column) with its `\u0000` and lone surrogate
 * escapes made `\ufffd`; any other text as it is (a text column stores a backslash and `u0000` as
 * written). The text is read only when it holds such an escape and is JSON.
 */
export function storableJsonText(text: string): string {
  if (!ESCAPED_UNSTORABLE.test(text) || !isJson(text)) return text;
  const escapes = [...text.matchAll(ESCAPE)];
  let out = '';
  let from = 0;
  for (let i = 0; i < escapes.length; i++) {
    const hex = escapes[i][1];
    if (hex === undefined) continue;
    const code = parseInt(hex, 16);
    const at = escapes[i].index!;
    if (isHigh(code)) {
      const next = escapes[i + 1];
      // A pair is two escapes side by side, high then low.
      if (next?.[1] !== undefined && next.index === at + 6 && isLow(parseInt(next[1], 16))) {
        i++;
        continue;
      }
    } else if (code !== 0 && !isLow(code)) {
      continue;
    }
    out += `${text.slice(from, at)}\\ufffd`;
    from = at + 6;
  }
  return out + text.slice(from);
}

/**
 * A statement's parameter as PostgreSQL can store it: text (and JSON text) made storable, arrays
 * (text[]) and plain objects (which pg sends as JSON) walked; anything else as it is.
 */
export function storable(value: unknown): unknown {
  if (typeof value === 'string') return storableJsonText(storableText(value));
  if (Array.isArray(value)) return value.map(storable);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [storableText(key), storable(child)]));
  }
  return value;
}
