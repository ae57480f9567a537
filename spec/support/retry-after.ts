import type { HostDriver, HostResponse } from './driver.js';

export interface RetryAfterOptions {
  /**
   * Lets `seconds` pass as the host counts time. Default: steps the host's clock, so a wait costs no wall
   * time and the host sees exactly the time it asked for.
   */
  wait?: (seconds: number) => Promise<void>;
  /** Retries of one call at most; then its last answer is returned as it is. Default 5. */
  attempts?: number;
}

/** Seconds a 429 or 503 asks for in Retry-After; undefined for any other answer (or a date, which the service never sends). */
function retryAfterOf(response: HostResponse): number | undefined {
  if (response.status !== 429 && response.status !== 503) return undefined;
  const header = response.headers['retry-after'];
  if (header === undefined || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

/**
 * The driver as a well-behaved client uses the service: an answer that says "too many, try again in N s"
 * (429, or 503 with Retry-After) is waited out and the call made again, a bounded number of times. The
 * behaviour suite runs through it, so a host with limits fails a test only when it keeps refusing.
 */
export function honouringRetryAfter<D extends HostDriver>(driver: D, options: RetryAfterOptions = {}): D {
  const wait = options.wait ?? (async (seconds: number) => void driver.clock.advance(seconds * 1000));
  const attempts = options.attempts ?? 5;
  async function retrying(send: () => Promise<HostResponse>): Promise<HostResponse> {
    let response = await send();
    for (let attempt = 0; attempt < attempts; attempt++) {
      const seconds = retryAfterOf(response);
      if (seconds === undefined) break;
      await wait(seconds);
      response = await send();
    }
    return response;
  }
  return {
    ...driver,
    call: (call) => retrying(() => driver.call(call)),
    fetchUrl: (url, init) => retrying(() => driver.fetchUrl(url, init)),
  };
}
