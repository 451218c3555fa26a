import pino, { type DestinationStream, type Logger } from 'pino';

/** Structured JSON logs; credentials are redacted wherever they could appear. */
export function createLogger(level: string, name = 'prediction-service', destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'headers["x-api-key"]',
        '*.secret',
        '*.password',
        '*.token',
        '*.refresh_token',
        'secret',
        'apiKey',
        'adminKey',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
