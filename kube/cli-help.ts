// `--help` for the processes' command lines: asked for anywhere in argv, it prints the usage and exits 0
// before any flag is parsed or validated (parseArgs in strict mode would refuse it as unknown).
export function wantsHelp(argv: readonly string[]): boolean {
  return argv.includes('--help') || argv.includes('-h');
}
