import { clientBudgetKey } from '../../../services/auth/sign-in-limits';

describe('clientBudgetKey', () => {
  it('counts an IPv4 client by its address and an IPv6 client by its /64, whatever its spelling', () => {
    expect(clientBudgetKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientBudgetKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientBudgetKey('::ffff:cb00:7107')).toBe('203.0.113.7');
    expect(clientBudgetKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientBudgetKey('2001:0DB8:0001:0002:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64');
    expect(clientBudgetKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(clientBudgetKey('::1')).toBe('0:0:0:0::/64');
    expect(clientBudgetKey('not an address')).toBe('not an address');
  });
});
