"""Sensor readings in tumbling and sliding windows."""
import pathway as pw

readings = pw.debug.table_from_rows(
    pw.schema_from_types(sensor=str, t=int, value=float),
    [(f"s{i % 4}", i * 3, float((i * 13) % 50)) for i in range(200)],
)
tumbling = readings.windowby(readings.t, window=pw.temporal.tumbling(duration=60), instance=readings.sensor).reduce(
    sensor=pw.this._pw_instance, start=pw.this._pw_window_start, mean=pw.reducers.avg(pw.this.value),
    peak=pw.reducers.max(pw.this.value),
)
sliding = readings.windowby(readings.t, window=pw.temporal.sliding(hop=50, duration=150)).reduce(
    start=pw.this._pw_window_start, n=pw.reducers.count(), total=pw.reducers.sum(pw.this.value),
)
pw.debug.compute_and_print(tumbling, include_id=False)
pw.debug.compute_and_print(sliding, include_id=False)
