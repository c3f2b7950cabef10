import zlib from 'node:zlib';

/**
 * Small files that inflate far beyond their size in their parser, as measured in the hardening
 * issue: a 0.7 MB DOCX whose document.xml inflates to 700 MB, a 0.4 MB PDF with one 400 MB
 * FlateDecode stream, and a 3.3 MB HTML of 660,000 nested <div>s.
 */
const MB = 1024 * 1024;

/** `mb` megabytes of zeros, deflated a megabyte at a time (never held whole), with their CRC-32. */
async function deflatedZeros(mb: number, raw: boolean): Promise<{ deflated: Buffer; crc: number; size: number }> {
  const deflate = raw ? zlib.createDeflateRaw({ level: 9 }) : zlib.createDeflate({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => out.push(chunk));
  const zeros = Buffer.alloc(MB);
  let crc = 0;
  for (let i = 0; i < mb; i++) {
    if (!deflate.write(zeros)) await new Promise((r) => deflate.once('drain', r));
    crc = zlib.crc32(zeros, crc);
  }
  await new Promise<void>((r) => deflate.end(r));
  return { deflated: Buffer.concat(out), crc, size: mb * MB };
}

interface ZipEntry {
  name: string;
  deflated: Buffer;
  crc: number;
  size: number;
}

const entryOf = (name: string, text: string): ZipEntry => ({ name, deflated: zlib.deflateRawSync(text), crc: zlib.crc32(text), size: Buffer.byteLength(text) });

/** A zip of deflated entries: local headers, central directory, end record. */
function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(e.crc >>> 0, 14);
    local.writeUInt32LE(e.deflated.length, 18);
    local.writeUInt32LE(e.size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(e.crc >>> 0, 16);
    central.writeUInt32LE(e.deflated.length, 20);
    central.writeUInt32LE(e.size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, e.deflated);
    centrals.push(central, name);
    offset += local.length + name.length + e.deflated.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

export async function docxBomb(): Promise<Buffer> {
  const types =
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
  const rels =
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
  return zip([entryOf('[Content_Types].xml', types), entryOf('_rels/.rels', rels), { name: 'word/document.xml', ...(await deflatedZeros(700, true)) }]);
}

export async function pdfBomb(): Promise<Buffer> {
  const { deflated } = await deflatedZeros(400, false);
  const objects = [
    '1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n',
    '2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n',
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>\nendobj\n',
  ].map((o) => Buffer.from(o));
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let size = parts[0].length;
  const add = (part: Buffer) => {
    parts.push(part);
    size += part.length;
  };
  for (const o of objects) {
    offsets.push(size);
    add(o);
  }
  offsets.push(size);
  add(Buffer.from(`4 0 obj\n<< /Length ${deflated.length} /Filter /FlateDecode >>\nstream\n`));
  add(deflated);
  add(Buffer.from('\nendstream\nendobj\n'));
  const xref = size;
  add(Buffer.from(`xref\n0 5\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`));
  return Buffer.concat(parts);
}

export function htmlBomb(): Buffer {
  return Buffer.from(`<html><body>${'<div>'.repeat(660_000)}</body></html>`);
}
