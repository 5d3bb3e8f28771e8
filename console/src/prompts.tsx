import { useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

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

interface KeyFormProps { title: string; note: string; onKey: (key: string) => void; onCancel?: () => void }

export function KeyForm({ title, note, onKey, onCancel }: KeyFormProps) {
  const [key, setKey] = useState('');
  return (
    <form class="key-form" onSubmit={(event) => { event.preventDefault(); if (key) onKey(key); }}>
      <h2>{title}</h2>
      <p>{note}</p>
      <label>Key <input type="password" name="key" autocomplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} /></label>
      <button type="submit">Use this key</button>
      {onCancel && <button type="button" onClick={onCancel}>Cancel</button>}
    </form>
  );
}
