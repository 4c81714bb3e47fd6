/**
 * o200k token counts of texts. One encoding (o200k_base, GPT-4o's) serves every model: counts are estimates for
 * other vendors' tokenizers.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

const NO_SPECIAL = { disallowedSpecial: new Set<string>() };

/** Answers counts in place of the tokenizer while set (sliced.ts: a measure's recording and replaying passes). */
let hook: ((text: string) => number | undefined) | undefined;

/** False while counts are not real (a recording pass): nothing is remembered from them. */
let remembering = true;

/**
 * Runs `measure` with `countTextTokens` answered by `answer` (the tokenizer when it returns undefined); `real` says
 * whether the answers are counts that caches may keep.
 */
export function withCounts<T>(answer: (text: string) => number | undefined, measure: () => T, real: boolean): T {
  const [outerHook, outerRemembering] = [hook, remembering];
  hook = answer;
  remembering = real;
  try {
    return measure();
  } finally {
    hook = outerHook;
    remembering = outerRemembering;
  }
}

/** Whether a count just made may be remembered (see withCounts). */
export function countsAreReal(): boolean {
  return remembering;
}

/** Texts longer than this are estimated from samples (see countTextTokens). */
const EXACT_LIMIT = 128 * 1024;
const SAMPLES = 16;
const SAMPLE_CHARS = 2 * 1024;

/**
 * o200k tokens of a text. The tokenizer runs on the event loop, and slowly (random letters, like base64, are the
 * slow end; the figures in docs/performance.md). Up to 128 KiB the count is exact but for the cuts `textPieces`
 * makes; beyond, it is extrapolated from 16 evenly spread 2 KiB samples (within a few percent for natural text;
 * the upstream's own usage, when reported, is what is charged). While a large request is being measured in slices
 * (sliced.ts), the count comes from there.
 */
export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  const counted = hook?.(text);
  if (counted !== undefined) return counted;
  if (text.length <= PIECE) return countTokens(text, NO_SPECIAL);
  let tokens = 0;
  for (const piece of textPieces(text)) tokens += countTokens(piece, NO_SPECIAL);
  return tokens;
}

/** The text's count from the counts of its pieces (`pieces` as `textPieces` gives them). */
export function combinePieces(text: string, pieceTokens: number): number {
  if (text.length <= EXACT_LIMIT) return pieceTokens;
  return Math.ceil((pieceTokens * text.length) / (SAMPLES * SAMPLE_CHARS));
}

/**
 * The pieces a text is counted in, each at most about PIECE characters: the whole text up to 128 KiB, else its
 * samples. BPE is quadratic in the length of one pre-tokenized run (a long word could take seconds), and a piece
 * is also the unit a sliced count yields after; a cut falls just before a space that starts a word, where o200k's
 * pre-tokenizer cuts too, or, in a run with no such space, anywhere (about a token of error per cut).
 */
export function* textPieces(text: string): Generator<string, void, undefined> {
  if (text.length <= EXACT_LIMIT) {
    yield* cut(text);
    return;
  }
  const stride = Math.floor((text.length - SAMPLE_CHARS) / (SAMPLES - 1));
  for (let i = 0; i < SAMPLES; i++) yield* cut(text.slice(i * stride, i * stride + SAMPLE_CHARS));
}

const PIECE = 1024;
/** How far back from a piece's end a word boundary is looked for. */
const BOUNDARY_SEARCH = 256;

function* cut(text: string): Generator<string, void, undefined> {
  let start = 0;
  while (text.length - start > PIECE) {
    let end = start + PIECE;
    for (let at = end; at > end - BOUNDARY_SEARCH; at--) {
      if (text.charCodeAt(at) === 32 && !isSpace(text.charCodeAt(at - 1)) && !isSpace(text.charCodeAt(at + 1))) {
        end = at;
        break;
      }
    }
    yield text.slice(start, end);
    start = end;
  }
  if (start < text.length) yield start === 0 ? text : text.slice(start);
}

function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || code === 160;
}

/** One piece's tokens (sliced.ts counts pieces one by one). */
export function countPiece(piece: string): number {
  return countTokens(piece, NO_SPECIAL);
}
