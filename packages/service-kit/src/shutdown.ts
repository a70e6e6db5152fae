import type { Logger } from './logger';
import type { Lifecycle } from './health';

interface Step {
  name: string;
  run: () => Promise<void>;
}

/**
 * Stop taking work, drain, close connections, exit — each resource with a named handler,
 * run in the order registered. A step that hangs is abandoned after its timeout.
 */
export class GracefulShutdown implements Lifecycle {
  shuttingDown = false;
  private readonly steps: Step[] = [];
  private running?: Promise<void>;

  constructor(
    private readonly logger: Logger,
    private readonly stepTimeoutMs = 10_000,
  ) {}

  register(name: string, run: () => Promise<void>): this {
    this.steps.push({ name, run });
    return this;
  }

  listen(exit: (code: number) => void = (code) => process.exit(code)): void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.logger.info({ signal }, 'shutdown requested');
      void this.run().then(
        () => exit(0),
        () => exit(1),
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }

  run(): Promise<void> {
    this.running ??= this.runSteps();
    return this.running;
  }

  private async runSteps(): Promise<void> {
    this.shuttingDown = true;
    let failed = false;
    for (const step of this.steps) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          step.run(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`timed out after ${this.stepTimeoutMs} ms`)),
              this.stepTimeoutMs,
            );
          }),
        ]);
        this.logger.info({ step: step.name }, 'shutdown step done');
      } catch (err) {
        failed = true;
        this.logger.error({ step: step.name, err }, 'shutdown step failed');
      } finally {
        clearTimeout(timer);
      }
    }
    if (failed) throw new Error('shutdown finished with errors');
  }
}
