package suite_test

// Places the communication scenarios name, beyond the shared settings table.
func init() {
	for k, v := range map[string]string{"Bristol": "UK"} {
		settings[k] = v
	}
}
