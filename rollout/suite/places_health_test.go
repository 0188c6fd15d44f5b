package suite_test

// Places the health scenarios are set in, beyond the shared settings table.
func init() {
	for k, v := range map[string]string{"Phoenix": "US", "Arizona": "US", "Denver": "US", "Colorado": "US", "Bristol": "UK"} {
		settings[k] = v
	}
}
