// What a private-evaluator-v1 check may run as its examiner: /usr/bin/python3, with flags that take no
// argument, then a script inside the read-only verifier mount (staged from PRIME), then the script's own
// arguments. Anything else — `-c` or `-m` code, a script from the candidate's input, a path that climbs
// out of the mount — would run bytes the Policy did not stage.

/** Where a check's verifiers are mounted read-only in the examiner, one directory per Root. */
export const VERIFIERS_MOUNT = '/run/worldline-verifiers';
export const EXAMINER_INTERPRETER = '/usr/bin/python3';
/** python3 flags that take no argument and run no code of their own. */
const FLAGS = new Set(['-I', '-B', '-E', '-s', '-S', '-u', '-O', '-OO', '-b', '-bb', '-q', '-P', '-R']);

/** Why `command` is not an examiner command, or undefined when it is. */
export function examinerCommandProblem(command: readonly string[]): string | undefined {
  if (command[0] !== EXAMINER_INTERPRETER) return `the examiner must be ${EXAMINER_INTERPRETER}, not ${JSON.stringify(command[0] ?? '')}`;
  let i = 1;
  while (i < command.length && command[i]!.startsWith('-')) {
    if (!FLAGS.has(command[i]!)) return `python3 option ${JSON.stringify(command[i])} is not allowed before the script (allowed: ${[...FLAGS].join(' ')})`;
    i++;
  }
  const script = command[i];
  if (script === undefined) return `no script: the examiner runs a file under ${VERIFIERS_MOUNT}/`;
  const segments = script.split('/').slice(1);
  const inside = script.startsWith(`${VERIFIERS_MOUNT}/`) && segments.length >= 4 && segments.every((s) => s !== '' && s !== '.' && s !== '..');
  if (!inside) return `the script ${JSON.stringify(script)} is not a file under ${VERIFIERS_MOUNT}/<root>/ (the staged verifiers)`;
  return undefined;
}
