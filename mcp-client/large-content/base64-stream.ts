/**
 * Base64 decoded as it arrives, by the rules `atob` checks a blob with (the SDK's schema for a
 * resource blob): ASCII whitespace skipped, up to two `=` and only at the end, no other character,
 * never one character alone in the last group. A blob that breaks them is `invalid`.
 */
export class Base64Stream {
  private carry = '';
  invalid = false;

  constructor(private readonly out: (bytes: Buffer) => void) {}

  push(bytes: Buffer): void {
    if (this.invalid) return;
    let text = bytes.toString('latin1');
    if (/[\t\n\f\r ]/.test(text)) text = text.replace(/[\t\n\f\r ]+/g, '');
    if (/[^A-Za-z0-9+/=]/.test(text)) {
      this.invalid = true;
      return;
    }
    this.carry += text;
    const pad = this.carry.indexOf('=');
    const whole = pad === -1 ? this.carry.length : pad;
    const decodable = whole - (whole % 4);
    if (pad !== -1 && this.carry.length - decodable > 6) {
      this.invalid = true;
      return;
    }
    if (decodable === 0) return;
    this.out(Buffer.from(this.carry.slice(0, decodable), 'base64'));
    this.carry = this.carry.slice(decodable);
  }

  end(): void {
    if (this.invalid) return;
    let rest = this.carry;
    if (rest.length % 4 === 0) rest = rest.replace(/==?$/, '');
    if (rest.includes('=') || rest.length % 4 === 1) {
      this.invalid = true;
      return;
    }
    if (rest.length > 0) this.out(Buffer.from(rest, 'base64'));
    this.carry = '';
  }
}
