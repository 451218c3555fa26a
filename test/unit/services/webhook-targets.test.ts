import { resolveWithin } from '../../../services/webhooks/targets';

describe('resolveWithin (the webhook URL check\'s name lookup)', () => {
  test('answers no address once the deadline passes when the resolver never answers, instead of waiting for it', async () => {
    const never = () => new Promise<Array<{ address: string }>>(() => undefined);
    await expect(resolveWithin('hangs.example.com', 20, never)).resolves.toEqual([]);
  });

  test('answers the resolver\'s addresses when it answers before the deadline', async () => {
    const answers = async () => [{ address: '203.0.113.7' }, { address: '2001:db8::7' }];
    await expect(resolveWithin('quick.example.com', 5_000, answers)).resolves.toEqual([{ address: '203.0.113.7' }, { address: '2001:db8::7' }]);
  });

  test('answers no address when the name does not resolve (a name that does not resolve yet is accepted)', async () => {
    const fails = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await expect(resolveWithin('nowhere.example.com', 5_000, fails)).resolves.toEqual([]);
  });
});
