// Placeholder replaced by the control-plane harness.
export default function setup(): void {}
