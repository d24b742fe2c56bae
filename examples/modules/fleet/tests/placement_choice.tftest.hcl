# Placement by price (variable placement), the choice itself: the placement submodule (pure
# computation, no provider) run on offers given as variables, as data "liqo_offers" would read
# them: an app consumes from the cheapest of three providers offering what it asks.

run "the_cheapest_provider_offering_what_is_asked" {
  command = plan

  module {
    source = "./placement"
  }

  variables {
    asked = {
      "app/p1" = { cpu = "2", memory = "4Gi", pods = "20" }
      "app/p2" = { cpu = "2", memory = "4Gi", pods = "20" }
      "app/p3" = { cpu = "2", memory = "4Gi", pods = "20" }
    }
    consumers         = { "app/p1" = "app", "app/p2" = "app", "app/p3" = "app" }
    max_cost_per_hour = "0.50"
    offers = {
      # 2 × 0.10 + 4 × 0.01 = 0.24 per hour.
      "app/p1" = [{
        name   = "standard", resources = { cpu = "8", memory = "32Gi", pods = "110" },
        prices = { cpu = { amount = "0.10", per = null }, memory = { amount = "0.01", per = "1Gi" } }
      }]
      # Cheaper, but no memory; or too little cpu.
      "app/p2" = [
        { name = "cpu-only", resources = { cpu = "8", pods = "110" }, prices = { cpu = { amount = "0.01", per = null } } },
        { name = "tiny", resources = { cpu = "500m", memory = "64Gi", pods = "110" }, prices = { cpu = { amount = "0.001", per = null } } },
      ]
      # 2 × 0.04 + 4096Mi at 0.005 per 1024Mi = 0.10 per hour: the cheapest; and a dearer offer.
      "app/p3" = [
        { name = "gpu", resources = { cpu = "16", memory = "64Gi", pods = "110", "nvidia.com/gpu" = "2" }, prices = { cpu = { amount = "0.50", per = null } } },
        {
          name   = "small", resources = { cpu = "4", memory = "8192Mi", pods = "110" },
          prices = { cpu = { amount = "0.04", per = null }, memory = { amount = "0.005", per = "1024Mi" } }
        },
      ]
    }
  }

  assert {
    condition     = keys(output.placed) == ["app/p3"] && output.placed["app/p3"].offer == "small"
    error_message = "the app is placed on p3's offer small, the cheapest offering 2 cpu, 4Gi and 20 pods"
  }
  assert {
    condition     = abs(output.placed["app/p3"].cost_per_hour - 0.1) < 1e-9 && length(output.unplaced) == 0
    error_message = "offer small costs 0.10 per hour for what the app asks"
  }
}

run "a_lower_ceiling_places_nobody" {
  command = plan

  module {
    source = "./placement"
  }

  variables {
    asked             = { "app/p1" = { cpu = "2", memory = "4Gi" } }
    consumers         = { "app/p1" = "app" }
    max_cost_per_hour = "0.05"
    offers = {
      "app/p1" = [{
        name   = "standard", resources = { cpu = "8", memory = "32Gi" },
        prices = { cpu = { amount = "0.10", per = null }, memory = { amount = "0.01", per = "1Gi" } }
      }]
    }
  }

  assert {
    condition     = length(output.placed) == 0 && tolist(output.unplaced) == tolist(["app"])
    error_message = "0.24 per hour is above a ceiling of 0.05: the app is not placed"
  }
}
