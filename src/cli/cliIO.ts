/** What every command gets: the process's streams, environment and directory, and the parsed flags. */
export interface CliIO {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export type Flags = Record<string, string | boolean | undefined>;
