import { pino, type DestinationStream, type Logger } from 'pino';

/** Destinations with lines not yet written, flushed if the process exits before their timer. */
const waiting = new Set<BufferedLines>();
process.on('exit', () => {
  for (const lines of waiting) lines.flush();
});

/** How long a log line may wait for others to share its write (docs/adr/0040-cheap-chat-path.md). */
const LOG_FLUSH_MS = 20;
/** Or until this many characters are waiting. */
const LOG_FLUSH_CHARS = 64 * 1024;

/**
 * stdout for pino: lines are gathered for up to LOG_FLUSH_MS (or 64 K characters) and go out in one synchronous
 * write. pino's default destination is asynchronous, and while a write is in flight it appends each line to a
 * pending string and measures it with Buffer.byteLength, which flattens it: garbage that grows with every line
 * under load. A write(2) per line is a system call per line, a visible share of the CPU under load; one per
 * event-loop turn was still one per request at one connection, and on a virtual machine each flushes the TLB
 * (the figures in docs/performance.md). Writing (partial writes,
 * EAGAIN) stays with pino's synchronous SonicBoom; a crash loses at most the last LOG_FLUSH_MS of lines.
 */
class BufferedLines implements DestinationStream {
  private lines: string[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: DestinationStream) {}

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= LOG_FLUSH_CHARS) return this.flush();
    if (this.timer) return;
    waiting.add(this);
    this.timer = setTimeout(() => this.flush(), LOG_FLUSH_MS).unref();
  }

  flush(): void {
    waiting.delete(this);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return;
    const text = this.lines.length === 1 ? this.lines[0]! : this.lines.join('');
    this.lines = [];
    this.chars = 0;
    this.out.write(text);
  }
}

/** Keys that hold a credential wherever they appear at the top of a line. */
const CREDENTIAL_KEYS = ['authorization', 'api_key', 'key'];

/** JSON logs; credentials are redacted wherever they could appear. `destination` defaults to stdout. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', ...CREDENTIAL_KEYS, '*.api_key'],
      censor: '[redacted]',
    },
  };
  return pino(options, destination ?? new BufferedLines(pino.destination({ dest: 1, sync: true })));
}

/**
 * The logger of the per-request access line, a child of `logger` (same destination and level). The line holds
 * ids, names and figures only, so it keeps the top-level censors and skips the nested and wildcard ones: with
 * `*.api_key`, pino runs its redactor over every field of every line, garbage on every request.
 */
export function accessLogger<T extends { child(bindings: object, options: { redact: string[] }): T }>(logger: T): T {
  return logger.child({}, { redact: CREDENTIAL_KEYS });
}
