import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * JSON logs; credentials are redacted wherever they could appear. `destination` defaults to stdout, written
 * asynchronously: under load the lines of many requests go out in one write instead of one write each
 * (pino flushes what is buffered when the process exits; a SIGKILL can lose the last lines).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'api_key', 'key', '*.api_key'],
      censor: '[redacted]',
    },
  };
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
