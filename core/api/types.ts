/** A transport-free request: what every host turns its own request into. Header names are lower case. */
export interface ApiRequest {
  method: string;
  /** Path without query string, e.g. `/medical/v1/patient/abc`. */
  path: string;
  query: Record<string, string | readonly string[] | undefined>;
  headers: Record<string, string | undefined>;
  /**
   * The client's address as the transport saw it (the socket's peer: a proxy in front is the client here),
   * when there is a transport; failed API keys are counted per address.
   */
  remoteAddress?: string;
  /** Parsed JSON body, when the host parsed one. */
  body?: unknown;
  /** Raw body, for uploads (CSV, documents): streamed, never buffered whole by the core. */
  bodyStream?: AsyncIterable<Uint8Array> | Uint8Array | string;
}

/** A transport-free response. `body` is JSON-serialisable; `stream` is sent as is (files). */
export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  /** Serialised as JSON when sent. */
  body?: unknown;
  /** A body already serialised, sent as is (wins over `body`). */
  text?: string;
  /** A body streamed as it is produced (wins over both). */
  stream?: AsyncIterable<Uint8Array>;
}

/** RFC 9457 problem details, with our stable code. */
export interface Problem {
  status: number;
  title: string;
  detail: string;
  code: string;
  [extension: string]: unknown;
}
