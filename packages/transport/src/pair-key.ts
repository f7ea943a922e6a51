/**
 * A string key made of two strings, kept for the next call with the same two: the frames of one
 * flow follow each other, and the same key instance for them is no new string per frame and a hash
 * computed once for every Map it is looked up in (issue 19: a relay's latency is about how much it
 * touches per frame). The wire hands out one string instance per recent id (wire/data-header.ts),
 * so the comparison is usually of two pointers.
 */
export class PairKey {
  private first = ''
  private second = ''
  private key: string

  constructor(private readonly make: (first: string, second: string) => string) {
    this.key = make('', '')
  }

  of(first: string, second: string): string {
    if (first !== this.first || second !== this.second) {
      this.first = first
      this.second = second
      this.key = this.make(first, second)
    }
    return this.key
  }
}
