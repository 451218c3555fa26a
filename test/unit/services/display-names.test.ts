import { cleanDisplayName } from '../../../services/display-names';

describe('cleanDisplayName: a name the service makes (a model named after its target, a profile name from an identity provider) held to the rules of a name', () => {
  it('drops control characters and bidirectional overrides or isolates, and trims', () => {
    expect(cleanDisplayName('  Ada\u0000 Love\u202Elace\u2066 \n')).toBe('Ada Lovelace');
    expect(cleanDisplayName('Model of \u202Egpj.exe')).toBe('Model of gpj.exe');
  });

  it('keeps marks that only shape the text around them (a right-to-left mark, a joiner inside an emoji)', () => {
    expect(cleanDisplayName('\u05E9\u05DC\u05D5\u05DD\u200F x')).toBe('\u05E9\u05DC\u05D5\u05DD\u200F x');
    expect(cleanDisplayName('team \u{1F469}\u200D\u{1F4BB}')).toBe('team \u{1F469}\u200D\u{1F4BB}');
  });

  it('cuts a long name to 200 characters ending in an ellipsis, never splitting a surrogate pair', () => {
    const long = cleanDisplayName('x'.repeat(300))!;
    expect([long.length, long.endsWith('…')]).toEqual([200, true]);
    const astral = cleanDisplayName(`${'x'.repeat(198)}\u{1F600}yyy`)!;
    expect(astral).toBe(`${'x'.repeat(198)}…`);
    expect(cleanDisplayName('x'.repeat(200))).toBe('x'.repeat(200));
  });

  it('answers null when nothing visible is left', () => {
    expect(cleanDisplayName('\u200B \u202E\u0007')).toBeNull();
    expect(cleanDisplayName('')).toBeNull();
  });
});
