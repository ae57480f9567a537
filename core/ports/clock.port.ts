/** The time. The core never reads the system clock itself, so tests step time instead of sleeping. */
export interface ClockPort {
  /** The current instant; successive calls never go backwards. */
  now(): Date;
}
