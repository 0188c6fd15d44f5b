package suite_test

// Places the productivity scenarios are set in, beyond the shared table.
func init() {
	for k, v := range map[string]string{"California": "US", "Edinburgh": "UK"} {
		settings[k] = v
	}
}
