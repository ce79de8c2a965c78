// The page's one way to the server: @gostop/client's browser client over the Connect protocol,
// to the page's own origin (gostop serve answers the API and the page on the same HTTP port).
import { createBrowserClient, GostopClient, type GostopError } from "@gostop/client";

export * from "@gostop/client";

let client: GostopClient | undefined;
let clientKey: string | undefined;

/** The client, made once per API key (the key travels as x-api-key on every call). */
export function api(apiKey?: string): GostopClient {
  const key = apiKey || undefined;
  if (client === undefined || clientKey !== key) {
    client?.close();
    client = createBrowserClient({ ...(key !== undefined ? { apiKey: key } : {}), timeoutMs: 15_000 });
    clientKey = key;
  }
  return client;
}

/** A failure's reason for people: the service's ErrorInfo reason, else its message. */
export function describeError(error: unknown): string {
  const e = error as Partial<GostopError> & { message?: string };
  if (typeof e.reason === "string" && e.reason !== "") return `${e.reason}: ${e.rawMessage ?? ""}`;
  return e.message ?? String(error);
}
