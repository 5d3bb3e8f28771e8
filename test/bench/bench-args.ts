/** A bench's command-line options: `--name=N` (a number, `fallback` when absent) and `--name=a,b` (a list, undefined when absent). */
export const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);

export const listArg = (name: string): string[] | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]?.split(',');
