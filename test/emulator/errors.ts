// The service's error answers: {reqId, statusCode, message, error}. Handlers throw ServiceError;
// the pipeline turns it into the body.
import type { ZodError } from "zod";

export class ServiceError extends Error {
  readonly statusCode: number;
  readonly error: string;
  readonly detail: unknown;

  constructor(statusCode: number, error: string, message: string, detail?: unknown) {
    super(message);
    this.statusCode = statusCode;
    this.error = error;
    this.detail = detail;
  }
}

export const badRequest = (message: string): ServiceError => new ServiceError(400, "BadRequest", message);
export const notFound = (message: string): ServiceError => new ServiceError(404, "NotFound", message);
export const forbidden = (message: string): ServiceError => new ServiceError(403, "PermissionDenied", message);
/** Fastify's answer for a path no route serves. */
export const routeNotFound = (method: string, path: string): ServiceError =>
  new ServiceError(404, "Not Found", `Route ${method}:${path} not found`);
export const tokenMissing = (): ServiceError => new ServiceError(401, "UnauthorizedError", "Token missing");
export const tokenInvalid = (message: string): ServiceError => new ServiceError(403, "TokenError", message);

/** 422 whose message is the zod issues themselves, as the real service answers. */
export function validationFailure(issues: ZodError["issues"]): ServiceError {
  return new ServiceError(422, "ValidationFailure", "Validation failed", issues);
}

export function errorBody(err: ServiceError, reqId: string): Record<string, unknown> {
  const message = err.statusCode === 422 ? err.detail : err.message;
  return { reqId, statusCode: err.statusCode, message, error: err.error };
}

/** The generic body of an injected server error. */
export function faultBody(status: number, reqId: string): Record<string, unknown> {
  const error = status >= 500 ? "InternalServerError" : "InjectedFault";
  const message = status >= 500 ? "Something went wrong" : "Injected fault";
  return { reqId, statusCode: status, message, error };
}
