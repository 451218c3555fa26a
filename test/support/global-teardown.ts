export default async function globalTeardown(): Promise<void> {
  const steps = globalThis.__integrationTeardown?.steps ?? [];
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch (err) {
      console.warn('teardown step failed', err);
    }
  }
}
