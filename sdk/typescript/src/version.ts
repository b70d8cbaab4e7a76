/** The SDK's version: the taskflow release whose API it was generated from (package.json's version; scripts/version-check.mjs keeps them one). */
export const VERSION = '0.1.0-dev';
