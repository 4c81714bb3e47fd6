import { pino, type DestinationStream, type Logger } from 'pino';

/** JSON logs; credentials are redacted wherever they could appear. `destination` defaults to stdout. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'api_key', 'key', '*.api_key'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
