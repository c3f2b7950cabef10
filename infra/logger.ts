import pino from 'pino';

/**
 * JSON logs. Callers log ids, statuses, counts and timings; prompt and output text never go in a
 * log line, which is why nothing here serialises request bodies.
 */
export const logger = pino({
  level: process.env.LOG_LEVEL ?? 'info',
  base: { service: 'agent-execution', pid: process.pid },
  redact: { paths: ['req.headers.authorization', '*.authorization', '*.input', '*.messages', '*.text'], censor: '[redacted]' },
});
