import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { forgetCredentials, onKeyNeeded, storeKey, storeToken } from './api';
import { Caller } from './caller';
import { InboxPage } from './inbox-page';
import { IntegrationsPage } from './integrations-page';
import { AdminKeyPrompt, CredentialPrompt } from './prompts';
import { RunPage } from './run-page';
import { RunsPage } from './runs-page';
import { completeSignIn, isSignInReturn, signInSettings, type SignInSettings } from './sign-in';

/** The console's pages, by hash route, so that the API serves one page, one script and one style sheet. */

type Route = { page: 'runs' } | { page: 'run'; runId: string } | { page: 'inbox' } | { page: 'integrations' };

function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  const run = /^\/runs\/([^/]+)$/.exec(path);
  if (run) return { page: 'run', runId: decodeURIComponent(run[1]) };
  if (path === '/inbox') return { page: 'inbox' };
  if (path === '/integrations') return { page: 'integrations' };
  return { page: 'runs' };
}

interface AppProps {
  /** the provider sign-in, when the API has one for the console */
  signIn: SignInSettings | null;
  /** why the sign-in the provider sent back failed */
  signInFailure?: string;
}

function App({ signIn, signInFailure }: AppProps) {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  const [keyNeeded, setKeyNeeded] = useState(Boolean(signInFailure));
  // Bumped when a key is given: the page is mounted afresh and loads again with it.
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', follow);
    onKeyNeeded(() => setKeyNeeded(true));
    return () => window.removeEventListener('hashchange', follow);
  }, []);

  const useKey = (key: string) => {
    storeKey(key);
    setKeyNeeded(false);
    setGeneration((g) => g + 1);
  };
  // The pages load again without a credential: an API that needs one answers 401, which asks for it.
  const signOut = () => {
    forgetCredentials();
    setGeneration((g) => g + 1);
  };

  return (
    <>
      <header>
        <strong>Agent engine</strong>
        <nav>
          <a href="#/" class={route.page === 'runs' || route.page === 'run' ? 'current' : ''}>Runs</a>
          <a href="#/inbox" class={route.page === 'inbox' ? 'current' : ''}>Waiting for a person</a>
          <a href="#/integrations" class={route.page === 'integrations' ? 'current' : ''}>Integrations</a>
        </nav>
        <Caller key={`${generation}`} onSignOut={signOut} />
      </header>
      {keyNeeded && <CredentialPrompt signIn={signIn} failure={signInFailure} onKey={useKey} />}
      <AdminKeyPrompt />
      <main key={`${generation}`}>
        {route.page === 'runs' && <RunsPage />}
        {route.page === 'run' && <RunPage key={route.runId} runId={route.runId} />}
        {route.page === 'inbox' && <InboxPage />}
        {route.page === 'integrations' && <IntegrationsPage />}
      </main>
    </>
  );
}

/** The sign-in the provider sent back, if this page is its redirect: its token becomes the tab's credential. */
async function start(): Promise<void> {
  const signIn = await signInSettings().catch(() => null);
  let signInFailure: string | undefined;
  if (signIn && isSignInReturn()) {
    await completeSignIn(signIn).then(storeToken, (err: unknown) => { signInFailure = (err as Error).message; });
  }
  const root = document.getElementById('app')!;
  // The page's "Loading…" line is replaced, not kept beside the console (render would append to it).
  root.textContent = '';
  render(<App signIn={signIn} signInFailure={signInFailure} />, root);
}

void start();
