package suite_test

// Places the health scenarios are set in, beyond the shared settings table.
func init() {
	for k, v := range map[string]string{"Phoenix": "US", "Arizona": "US", "Denver": "US", "Colorado": "US", "Bristol": "UK",
		"Tucson": "US", "Glasgow": "UK", "Valencia": "EU", "Chengdu": "CN", "Ghent": "EU", "Porto": "EU"} {
		settings[k] = v
	}
}
