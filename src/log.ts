import { pino, type Logger, type LoggerOptions } from "pino";

// Paths pino removes from every log line wherever they appear. Tokens are also kept out of
// error messages at their source (src/api/errors.ts); this is the second line of defence.
export const redactPaths = [
  "token",
  "accessToken",
  "authorization",
  "Authorization",
  "headers.authorization",
  "headers.Authorization",
  "*.token",
  "*.accessToken",
  "*.authorization",
  "*.Authorization",
  "*.headers.authorization",
  "*.headers.Authorization",
  "*.passphrase",
  "*.data",
  "*.stringData",
  "data",
  "stringData",
  "passphrase",
];

export function createLogger(options: LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  const base: LoggerOptions = {
    level: process.env["LOG_LEVEL"] ?? "info",
    redact: { paths: redactPaths, censor: "[REDACTED]" },
    base: { app: "keyward" },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...options,
  };
  return destination ? pino(base, destination) : pino(base);
}

export type { Logger };
