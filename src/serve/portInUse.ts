/** The port is taken: said in workmem's words, with what to do. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';
  constructor(
    readonly host: string,
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(
      `port ${port} on ${host} is in use (another workmem serve, or another program): give another with --port, or --port 0 for a free one`,
      options,
    );
  }
}
