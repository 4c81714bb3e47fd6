import { pino, type Logger } from 'pino';

/** JSON logs; credentials are redacted wherever they could appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'api_key', 'key', '*.api_key'],
      censor: '[redacted]',
    },
  });
}
