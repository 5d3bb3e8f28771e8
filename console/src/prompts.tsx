import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, storedKey, storedToken } from './api';
import { beginSignIn, providerName, type SignInSettings } from './sign-in';

/**
 * The admin key, asked for one action at a time: a 403 admin_required asks, the action is retried
 * with it once, and it is forgotten (never stored anywhere).
 */

let ask: ((resolve: (key: string | null) => void) => void) | undefined;

const askAdminKey = () => new Promise<string | null>((resolve) => (ask ? ask(resolve) : resolve(null)));

export async function withAdminKey<T>(action: (adminKey?: string) => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 403 && err.code === 'admin_required')) throw err;
    const key = await askAdminKey();
    if (!key) throw err;
    return action(key);
  }
}

export function AdminKeyPrompt() {
  const [pending, setPending] = useState<((key: string | null) => void) | undefined>();
  useEffect(() => {
    ask = (resolve) => setPending(() => resolve);
    return () => { ask = undefined; };
  }, []);
  if (!pending) return null;
  const finish = (key: string | null) => {
    pending(key);
    setPending(undefined);
  };
  return (
    <KeyForm title="This action needs the admin key" note="It is used for this one request and not kept."
      onKey={finish} onCancel={() => finish(null)} />
  );
}

interface CredentialPromptProps { signIn: SignInSettings | null; failure?: string; onKey: (key: string) => void }

/** After a 401: a key, or, when the API has one, a sign-in with the operator's identity provider. */
export function CredentialPrompt({ signIn, failure, onKey }: CredentialPromptProps) {
  const [error, setError] = useState(failure);
  const title = storedToken() ? 'Your sign-in has ended'
    : storedKey() ? 'The API refused this key' : signIn ? 'Sign in to use this API' : 'This API needs a key';
  const held = signIn ? 'A key or the sign-in\'s access token' : 'The key';
  const note = `${held} is kept in this browser tab's session storage only, and sent in the Authorization header.`;
  const begin = (settings: SignInSettings) => {
    beginSignIn(settings).catch((err: unknown) => setError(`The sign-in could not start: ${(err as Error).message}`));
  };
  return (
    <KeyForm title={title} note={note} onKey={onKey}>
      {signIn && (
        <p>
          <button type="button" class="sign-in" onClick={() => begin(signIn)}>Sign in with {providerName(signIn)}</button> or give a key:
        </p>
      )}
      {error && <p class="error" role="alert">{error}</p>}
    </KeyForm>
  );
}

interface KeyFormProps { title: string; note: string; onKey: (key: string) => void; onCancel?: () => void; children?: ComponentChildren }

export function KeyForm({ title, note, onKey, onCancel, children }: KeyFormProps) {
  const [key, setKey] = useState('');
  return (
    <form class="key-form" onSubmit={(event) => { event.preventDefault(); if (key) onKey(key); }}>
      <h2>{title}</h2>
      <p>{note}</p>
      {children}
      <label>Key <input type="password" name="key" autocomplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} /></label>
      <button type="submit">Use this key</button>
      {onCancel && <button type="button" onClick={onCancel}>Cancel</button>}
    </form>
  );
}
