/** Reads a usage export's CSV (RFC 4180: quoted fields, `""` for a quote, CRLF) into one object per row. */
export function parseCsv(text: string): Array<Record<string, string>> {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else field += c;
  }
  if (field || record.length) throw new Error('The CSV does not end with CRLF');
  const [header, ...rows] = records;
  if (!header) throw new Error('The CSV has no header');
  return rows.map((values) => Object.fromEntries(header.map((name, i) => [name, values[i] ?? ''])));
}
