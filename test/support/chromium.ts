/**
 * Debian's Chromium, driven by playwright-core, as the browser test and the
 * screenshot script launch it. The flags keep it from reaching for the
 * network (this machine has none but the package registries) and let it run
 * as root.
 */
import { chromium, type BrowserContext } from 'playwright-core';

/** Where Chromium is: `/usr/bin/chromium` (`apt-get install -y chromium`), or `TELHA_CHROMIUM`. */
export const CHROMIUM = process.env['TELHA_CHROMIUM'] ?? '/usr/bin/chromium';

/** A headless Chromium with a fresh profile in `profile`. */
export function launchChromium(
  profile: string,
  options: { viewport?: { width: number; height: number }; deviceScaleFactor?: number } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...options,
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
