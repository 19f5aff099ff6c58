/**
 * The `--calls N --reps N` options of the client tools (`npm run client-loop`, `npm run
 * client-path`): parsed, or the usage printed and the process ended with 2.
 */
export interface CallsAndReps {
  calls: number;
  reps: number;
}

export function callsAndReps(command: string, argv: string[], defaults: CallsAndReps): CallsAndReps {
  const options = { ...defaults };
  const fail = (message: string): never => {
    process.stderr.write(`${command}: ${message}\nusage: npm run ${command} --workspace=bench -- [--calls N] [--reps N]\n`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = Number(argv[++i]);
    if (!Number.isInteger(value) || value < 1) fail(`${arg} needs a positive integer`);
    if (arg === "--calls") options.calls = value;
    else if (arg === "--reps") options.reps = value;
    else fail(`unknown option ${arg}`);
  }
  return options;
}
