export interface Telemetry {
  /** Flushes and stops the exporter (last step of a graceful shutdown); a no-op when off. */
  shutdown(): Promise<void>;
}
