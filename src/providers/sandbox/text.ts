/** The reply text before any cut: an echo of the last user message, or prompt-seeded lorem ipsum. */
import type { ChatMessage, ChatRequest } from '../types.js';

const WORDS = (
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore ' +
  'magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo ' +
  'consequat duis aute irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint ' +
  'occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum'
).split(' ');

/** Text of the last user message (text parts joined, images ignored); '' when there is none. */
export function lastUserText(messages: ChatMessage[]): string {
  const content = messages.findLast((message) => message.role === 'user')?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** The text choice `index` says before stop sequences, token limits and JSON mode apply. */
export function replyText(body: ChatRequest, index: number): string {
  if (body.model !== 'lorem') return lastUserText(body.messages);
  return loremText(hash(JSON.stringify(body.messages) + (body.seed ?? '')) + index);
}

/** 30 to 60 latin words in sentences, fully determined by `seed`. */
export function loremText(seed: number): string {
  const random = mulberry32(seed);
  const pick = (count: number) => Math.floor(random() * count);
  const sentences: string[] = [];
  for (let left = 30 + pick(31); left > 0;) {
    const length = Math.min(left, 5 + pick(8));
    const words = Array.from({ length }, () => WORDS[pick(WORDS.length)]!).join(' ');
    sentences.push(`${words[0]!.toUpperCase()}${words.slice(1)}.`);
    left -= length;
  }
  return sentences.join(' ');
}

/** 32-bit FNV-1a. */
export function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
