/* a map_ name and one of another module */
