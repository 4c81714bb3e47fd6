/** A model's human name, for clients that show one (Anthropic's model list): the catalog's `name`, else its id's. */

/** Words written in capitals. */
const ACRONYMS: ReadonlySet<string> = new Set(['gpt', 'llm', 'ai', 'vl', 'moe']);

/**
 * A name read from a model id: words capitalised, a version's numbers joined with dots, a date stamp dropped, and a
 * GPT's version attached as OpenAI writes it (`claude-haiku-4-5-20251001` is "Claude Haiku 4.5", `gpt-6.2-astra`
 * "GPT-6.2 Astra", `sandbox/echo` "Sandbox Echo").
 */
export function displayNameOf(id: string): string {
  const words = id
    .replace(/-\d{8}$/, '')
    .split(/[-_/:\s]+/)
    .filter(Boolean);
  const out: string[] = [];
  for (const word of words) {
    const last = out.at(-1);
    if (last !== undefined && /^\d+$/.test(word) && /^\d+(\.\d+)*$/.test(last)) {
      out[out.length - 1] = `${last}.${word}`;
    } else if (last === 'GPT' && /^\d/.test(word)) {
      out[out.length - 1] = `GPT-${word}`;
    } else {
      out.push(ACRONYMS.has(word.toLowerCase()) ? word.toUpperCase() : word[0]!.toUpperCase() + word.slice(1));
    }
  }
  return out.join(' ') || id;
}
