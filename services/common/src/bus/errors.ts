/**
 * A failure with an HTTP-like status that crosses the bus: a worker throws it, the reply carries
 * it in the NATS services error headers, the edge rethrows it and maps it to the face's envelope.
 * `details` travels as the error reply's JSON body (e.g. `{ param: "voice" }`).
 */
export class BusError extends Error {
  constructor(
    public readonly status: number,
    message: string,
    public readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'BusError';
  }
}

/** No worker subscribes to the subject: the service is down. */
export class WorkerUnavailableError extends BusError {
  constructor(subject: string) {
    super(503, `no worker is serving ${subject}; the service is unavailable`);
    this.name = 'WorkerUnavailableError';
  }
}

/** A worker took the request but went silent for longer than the allowed time. */
export class WorkerTimeoutError extends BusError {
  constructor(subject: string, ms: number) {
    super(504, `the worker serving ${subject} did not answer within ${ms} ms`);
    this.name = 'WorkerTimeoutError';
  }
}

/**
 * A worker took the request, promised signs of life (BUS_HEADERS.alive) and then sent none for
 * longer than the requester's silence limit: it died or lost the bus. The client may retry.
 */
export class WorkerSilentError extends BusError {
  constructor(subject: string, ms: number) {
    super(503, `the worker serving ${subject} stopped answering (no sign of life for ${ms} ms); try again`);
    this.name = 'WorkerSilentError';
  }
}
