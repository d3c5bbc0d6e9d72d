// Public entry of keyward's client of the service. See README.md next to this file.
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
  type CallOptions,
  type ClientOptions,
  type PassAdmission,
  type RequestInfo,
} from "./client.ts";
export { createApiClient, type ApiClient } from "./methods.ts";
export { operations, operationByName, type OperationInfo, type OperationName } from "./operations.ts";
export { claimConnections, closeConnections, openConnectionPools } from "./http.ts";
export {
  ApiError,
  RequestValidationError,
  ResponseTooLargeError,
  ResponseValidationError,
  ThrottledError,
  TransportError,
  isApiError,
  isJobInProgress,
  isServiceNotFound,
  isRequestValidationError,
  isRouteNotFound,
  isResponseTooLarge,
  isThrottled,
  isResponseValidationError,
  isTransportError,
  type ClientError,
  type FieldIssue,
  type TransportErrorKind,
} from "./errors.ts";
export { defaultRetryPolicy, parseRetryAfter, retryDecision, type RetryPolicy } from "./retry.ts";
export {
  bucketFor,
  bucketKey,
  createTokenBucket,
  credentialKey,
  holdOffCredential,
  type RateLimit,
  type TokenBucket,
} from "./ratelimit.ts";
export * from "./schemas.ts";
