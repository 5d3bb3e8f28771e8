import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data?: T;
  error?: unknown;
  reload: () => void;
}

/**
 * Data from completed requests: loaded at once, then again every `everyMs` (when given) and when
 * the tab comes back into view; one load at a time, and none after the page has gone. A reload
 * asked for during a load follows it (once), so that the last change asked about is always read.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], everyMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown }>({});
  const busy = useRef<AbortController | undefined>(undefined);
  const again = useRef(false);
  const controller = useRef(new AbortController());
  const run = useCallback(load, deps);
  const reload = useCallback(function reloadOnce() {
    const current = controller.current;
    if (current.signal.aborted) return;
    if (busy.current === current) {
      again.current = true;
      return;
    }
    busy.current = current;
    again.current = false;
    run(current.signal).then(
      (data) => { if (!current.signal.aborted) setState({ data }); },
      (error: unknown) => { if (!current.signal.aborted) setState((s) => ({ data: s.data, error })); },
    ).finally(() => {
      if (busy.current !== current) return;
      busy.current = undefined;
      if (again.current) reloadOnce();
    });
  }, [run]);

  useEffect(() => {
    controller.current = new AbortController();
    reload();
    const timer = everyMs ? setInterval(reload, everyMs) : undefined;
    const onVisible = () => { if (document.visibilityState === 'visible') reload(); };
    window.addEventListener('focus', reload);
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      controller.current.abort();
      if (timer) clearInterval(timer);
      window.removeEventListener('focus', reload);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [reload, everyMs]);
  return { ...state, reload };
}
