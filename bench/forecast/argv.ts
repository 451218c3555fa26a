/** A bench script's `--name value` option: its value, else `fallback`; without a fallback the option is required. */
export function option(argv: string[], name: string, fallback?: string): string {
  const i = argv.indexOf(name);
  if (i < 0) {
    if (fallback === undefined) throw new Error(`${name} is required`);
    return fallback;
  }
  return argv[i + 1];
}
