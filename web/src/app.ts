/** What pages share: the session, navigation, and the first key shown once after sign-up. */
import type { ApiKey, SessionInfo } from './api.js';

export interface App {
  session: SessionInfo;
  navigate(path: string): void;
  /** After sign-in or sign-up: switch the page to the signed-in shell. */
  signedIn(session: SessionInfo, firstKey?: ApiKey): void;
  /** The key created with the account at sign-up; the keys page shows it once and clears it. */
  takeFirstKey(): ApiKey | undefined;
}

/** A page draws into its container and returns what to do when the user leaves it. */
export type Page = (container: HTMLElement, app: App) => (() => void) | void;
