/**
 * Who is calling, as every authenticator answers it and every endpoint (the HTTP server, the
 * approvals API, the space) reads it. It lives with the authenticators, below the transports: the
 * endpoints depend on it, and authentication knows nothing of the servers that use it.
 */
export type AuthOutcome =
  | {
      readonly ok: true;
      readonly principal: string;
      /** The principal's roles (policy, approvals); absent means none. */
      readonly roles?: readonly string[];
    }
  | {
      readonly ok: false;
      readonly status: 401 | 403;
      readonly message: string;
      readonly headers?: Record<string, string>;
    };
