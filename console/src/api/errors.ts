/** The service's error envelope: branch on `code` (the envelope's `message`), show `detail` (its `messageDetail`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: Record<string, unknown> = {},
    readonly requestId: string | null = null,
  ) {
    super(detail);
    this.name = 'ApiError';
  }

  static async from(res: Response): Promise<ApiError> {
    const requestId = res.headers.get('x-request-id');
    const text = await res.text().catch(() => '');
    try {
      const body = JSON.parse(text) as Record<string, unknown>;
      if (typeof body.message === 'string' && typeof body.messageDetail === 'string') return new ApiError(res.status, body.message, body.messageDetail, body, requestId);
    } catch {
      // Not the envelope (a proxy's page, an empty answer): described below.
    }
    return new ApiError(res.status, `HTTP_${res.status}`, `The service answered ${res.status} ${res.statusText}.`.replace(/ \.$/, '.'), {}, requestId);
  }

  static network(cause: unknown): ApiError {
    const reason = cause instanceof Error ? ` (${cause.message})` : '';
    return new ApiError(0, 'NETWORK_ERROR', `The service could not be reached; check your connection and retry${reason}.`);
  }
}

/** Thrown when no session is left (never signed in, signed out in another tab, or the refresh token was refused). */
export class SignedOut extends ApiError {
  constructor(detail = 'You are signed out. Sign in again to continue.') {
    super(401, 'SIGNED_OUT', detail);
    this.name = 'SignedOut';
  }
}

export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(0, 'CLIENT_ERROR', err instanceof Error ? err.message : String(err));
}
